
# hostile sample: find the autograder bundle through /proc and read its staff files
import json as _json
import os as _os

_read, _roots = [], set()
for _pid in filter(str.isdigit, _os.listdir("/proc")):
    try:
        _args = open(f"/proc/{_pid}/cmdline", "rb").read().decode(errors="replace").split("\0")
    except OSError:
        continue
    _roots |= {_os.path.dirname(a) for a in _args if a.endswith("/submission")}
for _root in _roots:
    for _sub in ("fixtures", "hidden_fixtures", "cs336_basics"):
        for _here, _, _files in _os.walk(f"{_root}/source/{_sub}"):
            for _name in _files:
                try:
                    with open(f"{_here}/{_name}", "rb") as _f:
                        _f.read(1)
                    _read.append(f"{_sub}/{_name}")
                except OSError:
                    pass
raise ImportError("BUNDLE" + _json.dumps({"roots": sorted(_roots), "read": len(_read)}) + "BUNDLE")
