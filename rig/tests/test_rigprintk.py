from rig.protocol import MARK_AFTER, MARK_BEFORE
from rig.rigprintk import cmdline, console_stats, mask, parse_tag, stats


def test_tag_with_stamp_and_padding():
    t = parse_tag("rigprintk: scen=flood cpu=3 ctx=nmi seq=4711 lvl=3 t=123456 pad=xxxx")
    assert (t.scen, t.cpu, t.ctx, t.seq, t.level, t.pad, t.t_call_ns) == \
        ("flood", 3, "nmi", 4711, 3, 4, 123456)
    assert t.key == (3, "nmi", 4711)


def test_markers_match_the_module_encoding():
    t = parse_tag("rigprintk: scen=x cpu=0 ctx=irq seq=16777217 lvl=6")
    assert t.marker(MARK_BEFORE) == 0x11000001 and t.marker(MARK_AFTER) == 0x21000001


def test_untagged_and_truncated_lines_are_not_tags():
    assert parse_tag("rigprintk: scen=x run begin") is None
    assert parse_tag("rigprintk: scen=x cpu=0 ctx=task seq=1 lvl=6 pad=xx garbage") is None


def test_stats_line():
    s = stats(["noise", "rigprintk: stat scen=a kind=flood calls=10 p50_ns=1 p99_ns=2 "
                        "p999_ns=3 max_ns=4"])
    assert s == {"flood": {"calls": 10, "p50": 1, "p99": 2, "p999": 3, "max": 4}}


def test_console_stats_line():
    line = "[    2.000000] 001: rigprintk: console scen=legacy writes=812 by_flood_callers=0"
    assert console_stats(["noise", line]) == {"writes": 812, "by_callers": 0}
    assert console_stats(["rigprintk: console scen=x writes=3"]) is None


def test_cmdline_and_mask():
    assert cmdline(scen="a", markers=True, nmi_cpus=mask([1, 2])) == \
        "rigprintk.scen=a rigprintk.markers=1 rigprintk.nmi_cpus=6"
