import pytest

from rig.evidence.sidechannel import SideChannelError, parse


def frame(name, body):
    return b"@@rig begin %s %d\n" % (name.encode(), len(body)) + body + \
        b"\n@@rig end %s\n" % name.encode()


def test_sections_and_status_with_binary_body_and_noise():
    body = b"6,0,0,-;Linux\n\x00@@rig begin fake 3\n"
    data = b"garbage" + frame("kmsg", body) + frame("meta", b"records=1") + \
        b"@@rig status 16\n"
    sc = parse(data)
    assert sc.section("kmsg") == body
    assert sc.section("meta") == b"records=1"
    assert sc.status == 16 and sc.noise == len(b"garbage")


def test_truncated_section_names_offset():
    data = b"xx" + frame("kmsg", b"0123456789")[:-20]
    with pytest.raises(SideChannelError, match="'kmsg' at offset 2 announces 10 bytes"):
        parse(data)


def test_missing_end_marker():
    with pytest.raises(SideChannelError, match="no end marker"):
        parse(b"@@rig begin a 1\nxJUNKJUNKJUNKJUNK")


def test_missing_section_lists_what_is_there():
    with pytest.raises(SideChannelError, match="no section 'kmsg' .*sections: meta"):
        parse(frame("meta", b"")).section("kmsg")


def test_empty_channel():
    sc = parse(b"")
    assert sc.sections == {} and sc.status is None
