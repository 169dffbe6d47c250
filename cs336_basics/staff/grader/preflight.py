"""Before grading: which of the sandbox's mechanisms this machine lacks. `missing()` forks a
child that tries each one, in a cgroup and namespaces of its own (nothing it does reaches the
grader or the host: its mount namespace is private before it mounts anything), and reports.
`cs336 grade` and `grade-all` refuse to grade (exit 2) when any is missing, unless told
--allow-unsandboxed.
"""

import json
import os
import shutil
import tempfile

MECHANISMS = ("user switch", "network namespace", "loopback", "mount namespace", "tmpfs", "PID namespace",
              "cgroup memory/pids/cpu", "seccomp")


def _try_all(scratch: str, group) -> dict[str, str]:
    """In the forked child: {mechanism: why it failed} (empty: everything works)."""
    from cs336_basics.staff.grader import sandbox, seccomp

    failed = {}
    libc = sandbox._libc()

    def attempt(name, action):
        try:
            action()
        except Exception as e:  # noqa: BLE001 - any failure means the mechanism is missing
            failed[name] = f"{type(e).__name__}: {e}"

    if group is None:
        failed["cgroup memory/pids/cpu"] = "no cgroup could be created"
    else:
        attempt("cgroup memory/pids/cpu", group.join)
    attempt("network namespace", lambda: sandbox._check(libc.unshare(sandbox.CLONE_NEWNET), "unshare(CLONE_NEWNET)"))
    if "network namespace" not in failed:
        attempt("loopback", sandbox.loopback_up)
    attempt("mount namespace", lambda: (sandbox._check(libc.unshare(sandbox.CLONE_NEWNS), "unshare(CLONE_NEWNS)"),
                                        sandbox._check(libc.mount(None, b"/", None, sandbox.MS_REC | sandbox.MS_PRIVATE,
                                                                  None), "make / private")))
    if "mount namespace" not in failed:  # only in a private namespace: nothing to clean up on the host
        attempt("tmpfs", lambda: sandbox._check(libc.mount(b"tmpfs", scratch.encode(), b"tmpfs", sandbox.MS_NOSUID,
                                                           b"size=1m,nr_inodes=16"), "mount tmpfs"))
    else:
        failed["tmpfs"] = "needs a private mount namespace"
    attempt("PID namespace", lambda: sandbox._check(libc.unshare(sandbox.CLONE_NEWPID), "unshare(CLONE_NEWPID)"))
    attempt("seccomp", lambda: (sandbox._check(libc.prctl(sandbox.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs"),
                                seccomp.install()))

    def switch():
        uid = sandbox.pick_uid()
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)

    attempt("user switch", switch)
    return failed


def missing() -> dict[str, str]:
    """{mechanism: why it is unavailable} for each of MECHANISMS this machine lacks."""
    from cs336_basics.staff.grader import cgroup, sandbox

    if not sandbox.is_root():
        return {m: "needs root" for m in MECHANISMS}
    try:
        group = cgroup.create(64, 8, 0.1)
    except OSError as e:
        group, cgroup_error = None, str(e)
    scratch = tempfile.mkdtemp(prefix="cs336-preflight-")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and exit, whatever happens
        try:
            os.close(read)
            os.write(write, json.dumps(_try_all(scratch, group)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        raw = f.read()
    os.waitpid(pid, 0)
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        failed = json.loads(raw or b"{}")
    except ValueError:
        failed = {"all": "the probe died"}
    if group is None:
        failed["cgroup memory/pids/cpu"] = cgroup_error
    else:
        group.remove()
    return failed
