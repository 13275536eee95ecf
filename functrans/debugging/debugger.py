"""``debug.breakpoint``: stop a running program and inspect its values interactively.

When a program reaches the breakpoint (eagerly, or when a compiled program runs it on the
host), an interactive prompt opens on the Python frames that were active where
``breakpoint`` was called, with their local variables; traced values among them are shown
with the values the program computed. Commands: ``p expr`` / ``pp expr`` (print, pretty
print; a bare expression prints too), ``u(p)`` / ``d(own)`` (move between frames),
``l(ist)`` (source around the line), ``w(here)`` / ``bt`` (the frames), ``c(ontinue)`` (resume
the program) and ``q(uit)`` / ``exit`` (end the process, as JAX's debugger does).

    >>> import io
    >>> def f(x):
    ...     y = x * 2
    ...     breakpoint(stdin=io.StringIO("p y\\nc\\n"), stdout=sys.stdout)
    ...     return y
    >>> _ = ft.jit(f)(fnp.arange(3.0))
    Entering the debugger:
    (fdb) Array([0., 2., 4.], dtype=float64)
    (fdb)
"""
from __future__ import annotations

import cmd
import inspect
import linecache
import pprint
import sys
import threading
import traceback

from ..core.frames import include_frame
from ..core.trace import Tracer
from ..primitives.callback import Callback, debug_callback_p
from ..core.tree import tree_flatten, tree_unflatten

__all__ = ["breakpoint"]

_lock = threading.Lock()  # one prompt at a time (shards of pmap reach it on their threads)


class _Frame:
    """A Python frame as the debugger shows it: where it is, its source, its variables."""

    def __init__(self, info, names, values):
        self.filename, self.lineno, self.function = info
        self.names, self.values = names, values
        self.source = linecache.getlines(self.filename)  # the file's lines ([] if unknown)

    def variables(self) -> dict:
        return dict(zip(self.names, self.values))


def _frames_here(filter_frames: bool, num_frames):
    """The caller's frames, innermost first (functrans's and registered libraries' own
    frames left out when ``filter_frames``), with their variables split into operands
    (traced values, computed when the program runs) and Python values."""
    frames = []
    outer = inspect.currentframe().f_back.f_back  # the caller of debug.breakpoint
    while outer is not None:
        if not filter_frames or include_frame(outer):
            frames.append(outer)
        outer = outer.f_back
    if num_frames is not None:
        frames = frames[:num_frames]
    return frames


def breakpoint(*, backend=None, filter_frames=True, num_frames=None, ordered=False,
               token=None, stdin=None, stdout=None):  # noqa: A001 - JAX's name
    """Open an interactive debugger when the program reaches this point (JAX's
    ``jax.debug.breakpoint``). ``num_frames`` limits the frames shown (innermost first);
    ``filter_frames`` leaves out functrans's (and registered libraries') own frames. With
    ``token`` (a pytree of arrays) the breakpoint returns it unchanged; otherwise None.
    ``stdin``/``stdout`` replace the terminal (for scripted sessions). Under ``vmap`` the
    prompt opens once per batch element; under ``grad`` it sees primal values.

        >>> import io
        >>> breakpoint(stdin=io.StringIO("p 1 + 1\\nc\\n"), stdout=sys.stdout)
        Entering the debugger:
        (fdb) 2
        (fdb)
    """
    if token is not None and ordered:
        raise ValueError("debug.breakpoint: `ordered` and `token` are mutually exclusive")
    if backend not in (None, "cli"):
        raise ValueError(f"debug.breakpoint: unknown debugger backend {backend!r}; functrans "
                         "has the command-line one ('cli')")
    frames = _frames_here(filter_frames, num_frames)
    infos, names, flat_all, trees = [], [], [], []
    for fr in frames:
        infos.append((fr.f_code.co_filename, fr.f_lineno, fr.f_code.co_name))
        local = dict(fr.f_locals)
        names.append(list(local))
        leaves, tree = tree_flatten(list(local.values()))
        flat_all.append(leaves)
        trees.append(tree)
    del frames
    # Traced leaves are the callback's operands; everything else is kept as it is.
    operands, where = [], []
    for i, leaves in enumerate(flat_all):
        for j, leaf in enumerate(leaves):
            if isinstance(leaf, Tracer):
                where.append((i, j))
                operands.append(leaf)
                leaves[j] = None  # the program's value fills it; no tracer is kept

    def open_prompt(*values):
        filled = [list(leaves) for leaves in flat_all]  # per call: shards may run at once
        for (i, j), v in zip(where, values):
            filled[i][j] = v
        shown = [_Frame(info, n, tree_unflatten(t, leaves))
                 for info, n, t, leaves in zip(infos, names, trees, filled)]
        with _lock:
            _Debugger(shown, stdin, stdout).run()

    flat, in_tree = tree_flatten((tuple(operands), {}))
    debug_callback_p.bind_all(*flat, callback=Callback(open_prompt, in_tree))
    return token


class _Debugger(cmd.Cmd):
    """The command-line prompt over the frames (innermost first)."""

    prompt = "(fdb) "

    def __init__(self, frames, stdin=None, stdout=None):
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is None
        self.frames, self.index = frames, 0

    def run(self):
        self.out("Entering the debugger:")
        if not self.frames:
            self.out("(no user frames)")
        self.cmdloop()
        if not self.use_rawinput:
            self.out("")  # end the last prompt's line in scripted sessions

    def out(self, text):
        print(text, file=self.stdout)

    def _eval(self, expr):
        env = self.frames[self.index].variables() if self.frames else {}
        return eval(expr, {}, env)  # the user's own expression, as pdb's ``p``

    def _show(self, expr, fmt):
        try:
            self.out(fmt(self._eval(expr)))
        except Exception:
            self.out("*** " + traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip())

    def default(self, line):
        self._show(line, repr)

    def emptyline(self):
        return False  # (cmd's default repeats the last command)

    def do_p(self, arg):
        """p expr: print the value of expr in the current frame."""
        self._show(arg, repr)

    def do_pp(self, arg):
        """pp expr: pretty-print the value of expr in the current frame."""
        self._show(arg, pprint.pformat)

    def do_up(self, arg):
        """u(p): go to the frame that called the current one."""
        if self.index + 1 >= len(self.frames):
            self.out("Already at the outermost frame.")
        else:
            self.index += 1
        self._context(2)
    do_u = do_up

    def do_down(self, arg):
        """d(own): go to the frame the current one called."""
        if self.index == 0:
            self.out("Already at the innermost frame.")
        else:
            self.index -= 1
        self._context(2)
    do_d = do_down

    def do_list(self, arg):
        """l(ist): the source around the current line."""
        self._context(5)
    do_l = do_list

    def do_where(self, arg):
        """w(here), bt: the frames, outermost first."""
        for k in range(len(self.frames) - 1, -1, -1):
            f = self.frames[k]
            mark = "> " if k == self.index else "  "
            self.out(f'{mark}File "{f.filename}", line {f.lineno}, in {f.function}')
            if 0 < f.lineno <= len(f.source):
                self.out("    " + f.source[f.lineno - 1].strip())
    do_w = do_bt = do_where

    def do_continue(self, arg):
        """c(ontinue): resume the program."""
        return True
    do_c = do_cont = do_continue

    def do_EOF(self, arg):  # end of a scripted input: resume
        return True

    def do_quit(self, arg):
        """q(uit), exit: end the process."""
        sys.exit(0)
    do_q = do_exit = do_quit

    def _context(self, around):
        if not self.frames:
            return
        f = self.frames[self.index]
        self.out(f"> {f.filename}({f.lineno}) {f.function}")
        for n in range(max(1, f.lineno - around), min(len(f.source), f.lineno + around) + 1):
            self.out(("->  " if n == f.lineno else "    ") + f.source[n - 1].rstrip("\n"))
