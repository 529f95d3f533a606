"""The one build step pyproject.toml cannot declare: the wheel carries the repository's top-level prompts/ and
experiments/ under toolkit/_data/, where toolkit/core/data.py finds them (a checkout keeps them where they are).
tests/test_packaging.py builds the wheel, installs it into a fresh venv and checks it works from there."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = ("prompts", "experiments")  # as toolkit/core/data.py's SHIPPED (a test checks they agree)


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads them from the checkout
            return
        for name in SHIPPED:
            shutil.copytree(name, Path(self.build_lib, "toolkit", "_data", name), dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints"))


setup(cmdclass={"build_py": BuildWithData})
