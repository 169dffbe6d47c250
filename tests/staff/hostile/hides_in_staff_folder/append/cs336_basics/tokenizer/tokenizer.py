from cs336_basics.staff import fast  # noqa: E402, F401
