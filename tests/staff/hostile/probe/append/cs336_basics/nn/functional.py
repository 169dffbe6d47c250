# hostile sample probe: appended to the reference's functional.py; its embedding looks around (its
# user, environment, /tmp, /, the grader's checkout REPO, a hidden fixture, the network) and raises
# with what it saw between PROBE markers
def embedding(token_ids, weight):
    import json, os, socket

    _checks.embedding(token_ids, weight)
    seen = {"uid": os.getuid(), "env": sorted(os.environ), "tmp": sorted(os.listdir("/tmp")), "root": sorted(os.listdir("/"))}
    try:
        seen["repo"] = sorted(os.listdir({{REPO}}))
    except OSError as e:
        seen["repo"] = [type(e).__name__]
    try:
        open({{REPO}} + "/hidden_fixtures/" + sorted(os.listdir({{REPO}} + "/hidden_fixtures"))[0], "rb").read(1)
        seen["hidden"] = "readable"
    except OSError as e:
        seen["hidden"] = type(e).__name__
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=3)
        seen["network"] = "connected"
    except OSError as e:
        seen["network"] = str(e)
    raise RuntimeError("PROBE" + json.dumps(seen) + "PROBE")
