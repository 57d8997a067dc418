"""A build command's guardian: it runs the command in its own session and
kills the whole session when the rig that started it dies.

rig.children starts it with PR_SET_PDEATHSIG set to SIGTERM, as the leader
of a new session: a harness killed with SIGKILL runs no cleanup of its own,
and make's compilers would otherwise go on for minutes. On SIGTERM (or
SIGINT, SIGHUP) it kills every process of its session, itself last; when
the command ends by itself it exits with the command's status.

Standard library only, and run by path: it starts in a build's directory,
where the rig package is not importable.
"""
import os
import signal
import sys


def session_members(sid: int):
    """The pids of every live process in session sid (from /proc)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp session ...: comm may hold spaces and ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 3 and fields[0] != b"Z" and int(fields[3]) == sid:
            yield int(entry)


def kill_session(signum=None, frame=None) -> None:
    """SIGKILL every other process of this session (make, its compilers, and
    any that made a process group of their own), then exit."""
    me, sid = os.getpid(), os.getsid(0)
    for _ in range(20):         # make may fork once more between scan and kill
        others = [pid for pid in session_members(sid) if pid != me]
        if not others:
            break
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    os._exit(128 + (signum or signal.SIGKILL))


def main(argv) -> int:
    if not argv or argv[0] != "--" or len(argv) < 2:
        print("usage: guardian.py -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    command = argv[1:]
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, kill_session)
    pid = os.fork()
    if pid == 0:
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)
        try:
            os.execvp(command[0], command)
        except OSError as e:
            print(f"guardian: cannot run {command[0]}: {e.strerror}", file=sys.stderr)
            os._exit(127)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else \
        128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
