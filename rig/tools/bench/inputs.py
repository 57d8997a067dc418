"""What checking a boot's cached inputs costs (rig.artifacts.cache): in a
fresh process, the first lookup of QEMU, its firmware, a kernel and its
initramfs hashes each file once; every later lookup in the process finds
the hashes kept by the files' size, times and inode."""
import json
import subprocess
import sys
from typing import Dict

from rig import paths

PROBE = """
import json, time
from pathlib import Path
from rig.artifacts import built, cache
from rig.artifacts.firmware import firmware
def lookup():
    return [built.qemu(), firmware(), built.kernel("patched"), built.initramfs("patched")]
t0 = time.perf_counter(); found = lookup(); t1 = time.perf_counter(); lookup()
t2 = time.perf_counter()
files = [Path(a["dir"]) / a["outputs"][n] for a in found for n in a["files"]]
cache._sha256_file.cache_clear()
t3 = time.perf_counter()
for f in files:
    cache.sha256_file(f)
t4 = time.perf_counter()
print(json.dumps({"first_ms": round((t1 - t0) * 1e3, 1), "later_ms": round((t2 - t1) * 1e3, 2),
                  "hashing_ms": round((t4 - t3) * 1e3, 1),
                  "mb_checked": round(sum(f.stat().st_size for f in files) / 2**20, 1)}))
"""


def measure() -> Dict:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=paths.REPO, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def table(d: Dict) -> str:
    return ("| lookup of QEMU, firmware, kernel and initramfs | wall time |\n|---|---|\n"
            f"| first in a process (inputs' keys, and the files checked) | {d['first_ms']} ms |\n"
            f"| of which checking the files ({d['mb_checked']} MB hashed) | "
            f"{d['hashing_ms']} ms |\n"
            f"| every later one in the process | {d['later_ms']} ms |\n")
