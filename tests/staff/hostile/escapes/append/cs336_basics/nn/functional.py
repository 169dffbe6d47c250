# hostile sample escapes: appended to the reference's functional.py; its embedding tries, once per
# worker, ways out of the containment: a vsock socket, the virtualenv's lock, 256 MB written to its
# home and /tmp, a double-forked setsid sleeper and a process whose main thread exited while another
# thread lives (both named LINGER_COMM); it raises with what it saw between ESCAPES markers
def embedding(token_ids, weight):
    global _ESCAPED
    import ctypes, fcntl, json, os, socket, sys, threading, time

    _checks.embedding(token_ids, weight)
    if "_ESCAPED" in globals():
        return weight[token_ids]
    _ESCAPED = seen = {}
    try:
        socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM).close()
        seen["vsock"] = "created"
    except OSError as e:
        seen["vsock"] = e.errno
    try:
        fd = os.open(sys.prefix + "/.lock", os.O_RDWR)
        seen["lock_rw"] = "opened"
    except OSError as e:
        seen["lock_rw"] = e.errno
        fd = os.open(sys.prefix + "/.lock", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    seen["lock_inode"] = os.fstat(fd).st_ino
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
    name = lambda: ctypes.CDLL(None).prctl(15, {{LINGER_COMM}}.encode(), 0, 0, 0)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            name()
            while True:
                time.sleep(0.05)
        os._exit(0)
    if os.fork() == 0:
        os.setsid()
        threading.Thread(target=lambda: (name(), [time.sleep(0.05) for _ in iter(int, 1)])).start()
        time.sleep(0.2)
        ctypes.CDLL(None).pthread_exit(None)
    raise RuntimeError("ESCAPES" + json.dumps(seen) + "ESCAPES")
