# SPDX-License-Identifier: MIT
"""A minimal TAP producer for the in-guest Python tests (no pytest in the
guest's path): @test registers a function, run() prints "ok N - name" or
"not ok N - name" with the exception indented as "# " lines."""
import sys
import traceback

_tests = []


def test(fn):
    _tests.append(fn)
    return fn


def raises(exc, fn, *args, match=None, **kw):
    """Call fn and require it to raise exc whose text contains match;
    returns the exception."""
    try:
        fn(*args, **kw)
    except exc as e:
        if match is not None and match not in str(e):
            raise AssertionError("%s raised %r, which does not say %r" % (fn.__name__, e, match))
        return e
    raise AssertionError("%s did not raise %s" % (getattr(fn, "__name__", fn), exc.__name__))


def run(prefix):
    failed = 0
    for n, fn in enumerate(_tests, 1):
        try:
            fn()
            print("ok %d - %s: %s" % (n, prefix, fn.__name__), flush=True)
        except Exception:  # noqa: BLE001 (any failure is a failed test)
            failed += 1
            print("not ok %d - %s: %s" % (n, prefix, fn.__name__), flush=True)
            for line in traceback.format_exc().splitlines():
                print("# " + line, flush=True)
    print("1..%d" % len(_tests), flush=True)
    sys.exit(1 if failed else 0)
