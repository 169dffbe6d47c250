# hostile sample exhausts: appended to the reference's functional.py; its embedding exhausts, once
# per worker: a fork bomb (children counted, then killed), CPU spinners (named SPIN_COMM) with their
# CPU time per wall second measured, then left behind stopped (SIGSTOP), the worker's home and /tmp
# filled, then a memfd written past the worker's memory (MEMFD_MB; RLIMIT_AS does not count a file
# that is never mapped). What it saw is printed between EXHAUSTS markers before the memfd: the
# public failure message shows the output's last lines.
def embedding(token_ids, weight):
    global _EXHAUSTED
    import ctypes, json, os, time

    _checks.embedding(token_ids, weight)
    if "_EXHAUSTED" in globals():
        return weight[token_ids]
    _EXHAUSTED = seen = {}
    children = []
    while len(children) < 1000:  # posix_spawn (vfork): quicker than forking a process that holds torch
        try:
            children.append(os.posix_spawn("/bin/sleep", ["sleep", "60"], {}))
        except OSError:
            break
    seen["forks"] = len(children)
    for pid in children:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    spinners = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            ctypes.CDLL(None).prctl(15, {{SPIN_COMM}}.encode(), 0, 0, 0)
            while True:
                pass
        spinners.append(pid)
    ticks = lambda: sum(sum(int(v) for v in open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[11:13]) for p in spinners)
    t0, c0 = time.monotonic(), ticks()
    time.sleep(1.0)
    seen["cpus"] = (ticks() - c0) / os.sysconf("SC_CLK_TCK") / (time.monotonic() - t0)
    for pid in spinners:  # stopped, not killed: the grader must end them
        os.kill(pid, 19)
    # write 16 MB files into $HOME and /tmp until the disk refuses (disk_mb: how much fitted)
    seen["disk_mb"] = 0
    for d in (os.environ["HOME"], "/tmp"):
        for i in range(8):
            try:
                with open(f"{d}/fill{i}", "wb") as f:
                    f.write(b"\0" * (16 << 20))
                seen["disk_mb"] += 16
            except OSError:
                break
    for d in (os.environ["HOME"], "/tmp"):  # so that the worker can still save its outputs
        for i in range(8):
            if os.path.exists(f"{d}/fill{i}"):
                os.remove(f"{d}/fill{i}")
    print("EXHAUSTS" + json.dumps(seen) + "EXHAUSTS", flush=True)
    fds = []
    for i in range({{MEMFD_MB}} // 16):  # 48 MB per memfd: each stays under RLIMIT_FSIZE
        if i % 3 == 0:
            fds.append(os.memfd_create("hog"))
        os.write(fds[-1], b"\1" * (16 << 20))
    return weight[token_ids]
