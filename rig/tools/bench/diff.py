"""rig diff's own speed, in host wall time, on log pairs of the shapes that
took minutes before the aligner (issue 22):

- two different boots of about 500 KB: the real boots of rig/tests/data,
  repeated with each repetition's numbers changed, against another pair of
  real boots grown the same way with other numbers (most records change);
- one boot with a block of 2000 records changed in place (every old x new
  pair went through SequenceMatcher.ratio() before);
- each first log against itself, the floor: the ratio to it is printed.

The target is check(): two different 500 KB boots in under TARGET_S.
"""
import lzma
import random
import time
from typing import Dict, List

from rig import paths
from rig.evidence import logdiff

DATA = paths.REPO / "rig" / "tests" / "data"
REAL_BOOTS = ("vanilla-boot.console.xz", "patched-panic-nmi.console.xz")
SIZE = 500_000
BLOCK = 2000
TARGET_S = 2.0


def real_lines(name: str) -> List[str]:
    data = lzma.decompress((DATA / name).read_bytes())
    return [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]


def grown(lines: List[str], seed: int, size: int = SIZE) -> bytes:
    """The lines repeated up to size bytes, each repetition's digits changed
    the way a different boot changes them (addresses, counts, times)."""
    rnd = random.Random(seed)
    out, total, rep = [], 0, 0
    while total < size:
        for ln in lines:
            text = "".join(rnd.choice("0123456789") if c.isdigit() and rnd.random() < 0.3 else c
                           for c in ln)
            out.append(text)
            total += len(text) + 1
        rep += 1
    return ("\n".join(out) + "\n").encode()


def changed_block(seed: int) -> List[bytes]:
    rnd = random.Random(seed)
    common = [f"init{i}: ready {i}" for i in range(4000)]
    old = [f"usb {i % 7}-{i % 5}: device descriptor read/{i % 64}, error -{rnd.randint(1, 200)}"
           for i in range(BLOCK)]
    new = [f"usb {i % 7}-{i % 5}: device descriptor read/{i % 64}, error -{rnd.randint(1, 200)} "
           f"port" for i in range(BLOCK)]
    return ["".join(f"[{i / 1e4:12.6f}] {t}\n" for i, t in enumerate(common[:2000] + block
                                                                       + common[2000:])).encode()
            for block in (old, new)]


def timed(a: bytes, b: bytes) -> Dict:
    t0 = time.perf_counter()
    la, lb = logdiff.parse("A", a), logdiff.parse("B", b)
    res = logdiff.compare(la, lb)
    logdiff.unified(la, lb)
    return {"s": round(time.perf_counter() - t0, 3), "bytes": [len(a), len(b)],
            "records": [len(la.records), len(lb.records)], "differences": len(res)}


def measure() -> Dict:
    boots = [grown(real_lines(n), seed) for seed, n in enumerate(REAL_BOOTS)]
    other = [grown(real_lines(n), seed + 10) for seed, n in enumerate(REAL_BOOTS)]
    block = changed_block(1)
    out = {"different_boots": timed(boots[0], other[1]),
           "same_boot_other_numbers": timed(boots[0], other[0]),
           "changed_block": timed(*block),
           "self": timed(boots[0], boots[0])}
    floor = max(out["self"]["s"], 1e-3)
    for k in ("different_boots", "same_boot_other_numbers", "changed_block"):
        out[k]["ratio_to_self"] = round(out[k]["s"] / floor, 1)
    return out


def table(d: Dict) -> str:
    rows = [("two different boots", d["different_boots"]),
            ("one boot against its numbers changed", d["same_boot_other_numbers"]),
            (f"a block of {BLOCK} changed records", d["changed_block"]),
            ("a log against itself", d["self"])]
    lines = ["| rig diff of | wall time | logs | differences | against the self-diff |",
             "|---|---|---|---|---|"]
    for name, r in rows:
        ratio = f"{r['ratio_to_self']}x" if "ratio_to_self" in r else "-"
        lines.append(f"| {name} | {r['s']:.2f} s | {r['bytes'][0] // 1000} KB / "
                     f"{r['bytes'][1] // 1000} KB | {r['differences']} | {ratio} |")
    return "\n".join(lines) + "\n"


def check(d: Dict) -> List[str]:
    s = d["different_boots"]["s"]
    return ([f"rig diff of two different 500 KB boots took {s:.2f} s; the target is "
             f"{TARGET_S} s"] if s >= TARGET_S else [])
