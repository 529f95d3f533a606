"""``toolkit report`` makes its process's allocators give large freed blocks back (``return_freed_memory``):
checked in processes of their own, since it changes the whole process."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import ctypes
import sys
import numpy as np
import pyarrow as pa

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]

if sys.argv[1] == "cli":
    from toolkit.cli.report import return_freed_memory
    if not return_freed_memory():
        print("no glibc")
        raise SystemExit(0)
big = np.ones(24 << 17)  # 24 MB mapped apart and freed: glibc's own threshold rises to 24 MB
del big
blocks = [np.ones(16 << 17) for _ in range(10)]  # 10 blocks of 16 MB, written
last = blocks[-1]
del blocks  # every block freed but the last
libc = ctypes.CDLL("libc.so.6")
if not hasattr(libc, "mallinfo2"):  # glibc < 2.33
    print("no glibc")
    raise SystemExit(0)
libc.mallinfo2.restype = MallInfo2
info = libc.mallinfo2()
print(info.fordblks >> 20, info.hblkhd >> 20, pa.default_memory_pool().backend_name)
"""


def kept(how: str) -> tuple[int, int, str]:
    """MB the allocator holds freed (its own count, mallinfo2's fordblks: not the process's resident size, which the
    kernel may lower under memory pressure - a CI run read 16 MB resident for the control), MB mapped apart, and
    Arrow's pool."""
    # glibc's defaults: any MALLOC_*_ variable (or a tunable) fixes the thresholds. Dask's nanny sets
    # MALLOC_TRIM_THRESHOLD_ in the environment of the process that starts a worker, so in a full test run an
    # earlier test's cluster left it in this worker's environment, and the control held nothing free (CI: 0 MB).
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", SCRIPT, how], capture_output=True, text=True, check=True,
                         timeout=120, cwd=REPO, env=env).stdout.split()
    if out[:2] == ["no", "glibc"]:
        pytest.skip("not glibc: return_freed_memory leaves the allocator alone")
    return int(out[0]), int(out[1]), out[2]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallinfo2 (Linux)")
def test_the_report_command_gives_freed_blocks_back():
    """Under glibc's own threshold the 9 freed 16 MB blocks stay with the allocator (the control: what the test sees
    without the call); after ``return_freed_memory`` (the report command's first step) each block is mapped apart,
    so the freed ones go back to the system and only the live one stays mapped, and Arrow allocates from malloc, not
    mimalloc."""
    cli_free, cli_mapped, cli_pool = kept("cli")
    default_free, default_mapped, _ = kept("default")
    assert default_free >= 100, default_free
    assert default_mapped < 16, default_mapped
    assert cli_free <= 40, cli_free
    assert cli_mapped >= 16, cli_mapped
    assert cli_pool == "system"
