"""The guest/host protocol is written once per side: rig/guest/protocol.h for
the guest's C code, rig.protocol for the harness. They must say the same,
and the guest's code must take its values from the header."""
import re

from rig import paths, protocol

DEFINE_RE = re.compile(r'^#define RIG_(\w+)\s+(0x[0-9a-fA-F]+|\d+|"[^"]*")', re.M)


def header() -> dict:
    text = paths.PROTOCOL_H.read_text()
    return {name: (value.strip('"') if value.startswith('"') else int(value, 0))
            for name, value in DEFINE_RE.findall(text)}


def host() -> dict:
    return {name: value for name, value in vars(protocol).items()
            if name.isupper() and isinstance(value, (int, str))}


def test_the_header_and_rig_protocol_hold_the_same_names_and_values():
    guest, ours = header(), host()
    assert guest, f"no RIG_ #defines found in {paths.PROTOCOL_H}"
    assert {n: v for n, v in guest.items() if ours.get(n) != v} == {}, (
        f"{paths.PROTOCOL_H} and rig/protocol.py differ")
    assert sorted(set(ours) - set(guest)) == [], "rig/protocol.py has names the header lacks"


def test_the_guest_code_takes_its_protocol_values_from_the_header():
    """No C file of the guest keeps its own copy of a port or marker."""
    values = {n: v for n, v in header().items() if isinstance(v, int) and v > 0xff}
    sources = [p for p in paths.GUEST_SRC.rglob("*.c")]
    assert sources
    copies = []
    for src in sources:
        text = src.read_text()
        for name, value in values.items():
            if re.search(rf"\b{value:#x}\b", text, re.I):
                copies.append(f"{src.relative_to(paths.REPO)}: {value:#x} (RIG_{name})")
    assert copies == [], "guest code repeats protocol values instead of including protocol.h"
