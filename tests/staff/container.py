"""Run a command as in a default `docker run`: root with only Docker's 14 default capabilities
(no CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SYS_RESOURCE, ...) and the cgroup filesystems read-only,
in a private mount namespace of its own (util-linux `unshare`, libcap's `capsh`). Staff tests use
it to grade at the "container" isolation level on a machine that would allow "full".

Python must be readable by the workers' users, as setup.sh makes it on Gradescope
(/opt/uv-python); where it lives under a private home (/root, 0700), the namespace shows that
home as a world-searchable tmpfs holding only the interpreter's directory.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

# Docker's default capabilities (moby/oci/caps/defaults.go)
DOCKER_DEFAULT_CAPS = (
    "chown",
    "dac_override",
    "fsetid",
    "fowner",
    "mknod",
    "net_raw",
    "setgid",
    "setuid",
    "setfcap",
    "setpcap",
    "net_bind_service",
    "sys_chroot",
    "kill",
    "audit_write",
)


def available() -> str | None:
    """Why the container cannot be made here, or None."""
    if os.geteuid() != 0:
        return "needs root"
    for tool in ("capsh", "unshare"):
        if shutil.which(tool) is None:
            return f"needs {tool}"
    return None


def _bounding_caps() -> list[str]:
    out = subprocess.run(["capsh", "--print"], capture_output=True, text=True, check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("Bounding set ="))
    return [c.removeprefix("cap_") for c in line.split("=", 1)[1].strip().split(",") if c]


def _exposed_python() -> list[str]:
    """Shell lines that make the interpreter's directory reachable by any user (see the docstring)."""
    lines = []
    base = Path(os.path.realpath(sys.base_prefix))
    for parent in [p for p in base.parents if p != Path("/")]:
        if not os.stat(parent).st_mode & 0o001:  # a directory others cannot search: /root
            view = "/mnt"  # an existing directory: the tmpfs on it exists in the namespace only
            inner = base.relative_to(parent).parts[0]
            lines += [
                f"mount -t tmpfs -o mode=0755,size=1m tmpfs {view}",
                f"mkdir -p {view}/{inner}",
                f"mount --bind {parent}/{inner} {view}/{inner}",
                f"mount --rbind {view} {parent}",
            ]
            break
    return lines


def command(argv: list[str]) -> list[str]:
    """argv wrapped to run in the container described above."""
    drop = [c for c in _bounding_caps() if c not in DOCKER_DEFAULT_CAPS]
    script = "\n".join(
        [
            "set -e",
            # the cgroup filesystems read-only, as Docker mounts them
            "for m in $(awk '$3 ~ /^cgroup2?$/ {print $2}' /proc/self/mounts); do mount -o remount,bind,ro \"$m\"; done",
            *_exposed_python(),
            'exec capsh --drop="$CS336_DROP" -- -c \'exec "$@"\' capsh "$@"',
        ]
    )
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "env",
        f"CS336_DROP={','.join('cap_' + c for c in drop)}",
        "bash",
        "-c",
        script,
        "container",
        *argv,
    ]
