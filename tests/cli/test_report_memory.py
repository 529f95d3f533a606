"""``toolkit report`` makes its process's allocators give large freed blocks back (``return_freed_memory``):
checked in processes of their own, since it changes the whole process."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
from pathlib import Path
import numpy as np
import pyarrow as pa

def rss_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024

if sys.argv[1] == "cli":
    from toolkit.cli.report import return_freed_memory
    if not return_freed_memory():
        print("no glibc")
        raise SystemExit(0)
big = np.ones(24 << 17)  # 24 MB mapped apart and freed: glibc's own threshold rises to 24 MB
del big
base = rss_mb()
blocks = [np.ones(16 << 17) for _ in range(10)]  # 10 blocks of 16 MB, written
last = blocks[-1]
del blocks  # every block freed but the last
print(rss_mb() - base, pa.default_memory_pool().backend_name)
"""


def kept(how: str) -> tuple[int, str]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, how], capture_output=True, text=True, check=True,
                         timeout=120, cwd=REPO).stdout.split()
    if out[:2] == ["no", "glibc"]:
        pytest.skip("not glibc: return_freed_memory leaves the allocator alone")
    return int(out[0]), out[1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_the_report_command_gives_freed_blocks_back():
    """Under glibc's own threshold the 9 freed 16 MB blocks stay resident (the control: what the test sees
    without the call); after ``return_freed_memory`` (the report command's first
    step) they go back to the system, and Arrow allocates from malloc, not mimalloc."""
    cli_kept, cli_pool = kept("cli")
    default_kept, _ = kept("default")
    assert default_kept >= 100, default_kept
    assert cli_kept <= 40, cli_kept
    assert cli_pool == "system"
