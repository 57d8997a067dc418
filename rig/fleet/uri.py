"""Which libvirt URIs the rig connects to.

A hosts file is shared between people and CI jobs, and the rig runs as
root: a URI must not be a way to run a command or to read or write a file
of the harness's machine. libvirt's own URI parameters can do all three
(https://libvirt.org/uri.html): `command=` runs a program instead of ssh,
`socket=` and `netcat=` go into the command line run on the host,
`keyfile=` and `pkipath=` read keys, `known_hosts=` is a file libvirt
writes. So only the transports the rig uses are accepted, host and user
names must look like names (an ssh argument cannot start with '-'), and
of the parameters only those that choose among libvirt's own behaviours
pass as they are. The others pass only where a hosts file line names them
in its `allow=` option (docs/fleet.md); an unknown one never does.
"""
import re
import urllib.parse
from typing import Iterable

from rig.faults import RigFault

# driver+transport schemes: the rig drives QEMU; ext runs a command by design.
REMOTE_SCHEMES = ("qemu+ssh", "qemu+libssh", "qemu+libssh2", "qemu+tls", "qemu+tcp")
LOCAL_SCHEMES = ("qemu", "qemu+unix")
PATHS = ("/system", "/session")
# Parameters that pick one of libvirt's own behaviours: harmless as given.
SAFE_PARAMS = ("no_tty", "no_verify", "known_hosts_verify", "sshauth", "tls_priority", "mode",
               "proxy")
# Parameters that run a command, go into one, or name a file of this
# machine (or another daemon): only with allow=NAME on the hosts file line.
GUARDED = {
    "command": "runs that program instead of ssh, here, as the rig's user",
    "socket": "goes into the command line libvirt runs on the host",
    "netcat": "names the program libvirt runs on the host",
    "keyfile": "makes ssh read that key file of this machine",
    "pkipath": "reads TLS keys from that directory of this machine",
    "known_hosts": "names a file libvirt writes on this machine",
    "name": "names another daemon URI for the host to open",
}
GUARDED_PARAMS = tuple(GUARDED)
# urlsplit's hostname: lower case, an IPv6 address without its brackets.
HOST_RE = re.compile(r"^(?:[a-z0-9][a-z0-9.-]{0,252}|[0-9a-f:.]+)$")
USER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
VALUE_RE = re.compile(r"^[A-Za-z0-9_.,:/+=@-]*$")


class URIError(RigFault, ValueError):
    """A libvirt URI the rig will not use; the message says what and why."""


def check(uri: str, allow: Iterable[str] = ()) -> str:
    """uri if the rig may connect to it; raises URIError naming the part."""
    allow = set(allow)
    unknown = allow - set(GUARDED_PARAMS)
    if unknown:
        raise URIError(f"allow={','.join(sorted(unknown))}: only "
                       f"{', '.join(GUARDED_PARAMS)} can be allowed")
    try:
        parts = urllib.parse.urlsplit(uri)
        port = parts.port
    except ValueError as e:
        raise URIError(f"{uri!r} is not a URI ({e})") from None
    scheme = parts.scheme
    if scheme not in REMOTE_SCHEMES + LOCAL_SCHEMES:
        raise URIError(f"{uri!r}: transport {scheme or '(none)'!r} is not one the rig uses "
                       f"({', '.join(REMOTE_SCHEMES)}, or qemu:///system on this machine)")
    host = parts.hostname or ""
    if scheme in LOCAL_SCHEMES and parts.netloc:
        raise URIError(f"{uri!r}: {scheme}:// names this machine's libvirtd; a host goes "
                       f"with a transport ({', '.join(REMOTE_SCHEMES)})")
    if scheme in REMOTE_SCHEMES:
        if not host or not HOST_RE.match(host):
            raise URIError(f"{uri!r}: host {host!r} is not a host name or address")
        if parts.username is not None and not USER_RE.match(parts.username):
            raise URIError(f"{uri!r}: user {parts.username!r} is not a user name")
        if parts.password is not None:
            raise URIError(f"{uri!r}: a password does not belong in a URI; use ssh keys "
                           "or TLS certificates")
    if port is not None and not 0 < port < 65536:
        raise URIError(f"{uri!r}: port {port} out of range")
    if parts.path not in PATHS:
        raise URIError(f"{uri!r}: path {parts.path or '(none)'!r}; the rig's QEMU runs "
                       f"under {' or '.join(PATHS)}")
    if parts.fragment:
        raise URIError(f"{uri!r}: a fragment (#{parts.fragment}) has no meaning here")
    if ";" in parts.query:
        # libvirt splits parameters at ';' as well as '&': one could hide behind another.
        raise URIError(f"{uri!r}: ';' in the query; separate parameters with '&'")
    try:
        params = urllib.parse.parse_qsl(parts.query, keep_blank_values=True,
                                        strict_parsing=bool(parts.query))
    except ValueError:
        raise URIError(f"{uri!r}: query {parts.query!r} is not NAME=VALUE&...") from None
    for name, value in params:
        if name in GUARDED_PARAMS and name not in allow:
            raise URIError(f"{uri!r}: parameter {name}= {GUARDED[name]}; refused unless "
                           f"the host's line in a hosts file says allow={name} "
                           f"(docs/fleet.md)")
        if name not in SAFE_PARAMS + GUARDED_PARAMS:
            raise URIError(f"{uri!r}: {name}= is not a libvirt URI parameter the rig "
                           f"knows ({', '.join(SAFE_PARAMS + GUARDED_PARAMS)})")
        if not VALUE_RE.match(value):
            raise URIError(f"{uri!r}: {name}={value!r}: not a plain value")
    return uri
