"""S8 multi-CPU emergency contiguity: 4 CPUs each print 100 ERR lines at once.
Every emergency line on the wire is contiguous (all its bytes from one vCPU),
complete, tagged with the CPU that printed it, and each CPU's lines keep
their order. None is lost or doubled.

Vanilla writes every line from whichever CPU holds the console lock, so a
line's bytes do not come from the CPU that printed it, and there is no CPU
field to compare."""
import pytest

from rig.evidence.properties import assert_contiguous
from rig.rigprintk import mask

# Deterministic (-icount): the same run every time, its boots run beside the
# other deterministic ones (rig/vm/hostshare.py), and its wire-bound waits take
# less wall time than in real time.
pytestmark = [pytest.mark.boots, pytest.mark.emergency, pytest.mark.cpuid, pytest.mark.golden]

CPUS, COUNT = 4, 100


def test_s8_emergency_lines_are_contiguous_and_ordered(rig_run, flavor, lacks):
    lacks("vanilla", "no atomic emergency writes: lines are written by the console lock holder")
    ev = rig_run(flavor, "S8", "run", smp=CPUS, flood_count=COUNT,
                 flood_cpus=mask(range(CPUS)), flood_level=3, flood_len=30)
    tagged = ev.tagged("S8")
    for line, tag in tagged:
        assert_contiguous(ev, line, tag.cpu)
        assert line.cpu == tag.cpu, (f"CPU tagging: console line {line.lineno} says CPU "
                                     f"{line.cpu}, the module printed it on CPU {tag.cpu} "
                                     f"({ev.where()})")
    for cpu in range(CPUS):
        seqs = [t.seq for _, t in tagged if t.cpu == cpu]
        assert sorted(seqs) == list(range(COUNT)), (
            f"no loss: cpu{cpu}: {len(seqs)} of {COUNT} lines, {len(set(seqs))} distinct "
            f"({ev.where()})")
        assert seqs == sorted(seqs), (
            f"emergency ordering: cpu{cpu}'s emergency lines out of order on the wire: "
            f"{[b for a, b in zip(seqs, seqs[1:]) if b < a][:5]} ({ev.where()})")
