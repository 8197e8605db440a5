"""``tooldec-compile``, the console script the wheel installs.

It is the Rust command line itself (``tooldec_cli::compile::run``, which the
``tooldec-compile`` binary calls too), linked into ``tooldec._tooldec``:
same flags, same output, same exit codes, same artifact bytes, without a
Rust toolchain.
"""

import signal
import sys


def main() -> int:
    """Runs ``tooldec-compile`` with this process's command line; returns
    its exit code (console scripts pass it to ``sys.exit``)."""
    from ._tooldec import _compile_main

    # The compile runs in Rust and never returns to Python's SIGINT handler
    # before it ends: Ctrl-C must stop the process at once, as it stops the
    # binary.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # The Rust code writes to file descriptors 1 and 2 directly.
    sys.stdout.flush()
    sys.stderr.flush()
    # The program name as the binary's users type it (clap shows it in
    # usage and errors), whatever path the script was started by.
    return _compile_main(["tooldec-compile", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
