# hostile sample import_error: appended to the reference's swiglu.py, a module that does not exist
import cs336_no_such_module  # noqa
