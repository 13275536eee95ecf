"""debug.breakpoint: a scripted session (stdin/stdout) sees the frames where it was called,
with traced locals holding the program's values, eagerly, under jit, vmap (once per element)
and grad; tokens come back unchanged; bad arguments raise clearly."""
import io

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp


def _session(commands):
    return io.StringIO("".join(c + "\n" for c in commands)), io.StringIO()


def _outputs(out):
    """What each command printed (the text between prompts; sessions' banners left out)."""
    text = out.getvalue().replace("Entering the debugger:", "")
    return [part.strip() for part in text.split("(fdb)")[1:]]


def test_jit_shows_traced_and_python_locals_and_the_frames():
    stdin, stdout = _session(["p y", "p scale", "pp {'y': y}", "w", "u", "d", "oops", "c"])

    def inner(x, scale):
        y = x * scale
        ft.debug.breakpoint(stdin=stdin, stdout=stdout)
        return y + 1

    def outer(x):
        return inner(x, 2.0)

    np.testing.assert_array_equal(ft.jit(outer)(fnp.arange(3.0)), [1.0, 3.0, 5.0])
    said = _outputs(stdout)
    assert stdout.getvalue().startswith("Entering the debugger:")
    assert said[0] == "Array([0., 2., 4.], dtype=float64)" and said[1] == "2.0"
    assert said[2] == "{'y': Array([0., 2., 4.], dtype=float64)}"
    assert "in outer" in said[3] and said[3].splitlines()[-2].startswith("> File")
    assert "in inner" in said[3].splitlines()[-2]  # the current (innermost) frame, last
    assert "outer" in said[4] and "->" in said[4]  # up: the caller's source line
    assert "inner" in said[5]
    assert said[6] == "*** NameError: name 'oops' is not defined"


def test_vmap_opens_it_per_element_and_grad_sees_primal_values():
    stdin, stdout = _session(["p x", "c", "p x", "c"])

    def f(x):
        ft.debug.breakpoint(stdin=stdin, stdout=stdout)
        return x * 3.0

    np.testing.assert_array_equal(ft.vmap(f)(fnp.asarray([1.0, 2.0])), [3.0, 6.0])
    printed = [s for s in _outputs(stdout) if s]
    assert printed == ["Array(1., dtype=float64)", "Array(2., dtype=float64)"]
    for grad in (ft.grad(f), ft.jit(ft.grad(f))):
        stdin, stdout = _session(["p x", "c"])  # (f reads these variables when it runs)
        assert float(grad(5.0)) == 3.0
        assert _outputs(stdout)[0] == "Array(5., dtype=float64)"


def test_token_num_frames_quit_and_bad_arguments():
    stdin, stdout = _session(["w", "c"])

    def f(x):
        return ft.debug.breakpoint(token=x * 2, num_frames=1, stdin=stdin, stdout=stdout)

    assert float(ft.jit(f)(fnp.float64(4.0))) == 8.0
    assert _outputs(stdout)[0].count("File") == 1
    with pytest.raises(SystemExit):
        ft.debug.breakpoint(stdin=io.StringIO("q\n"), stdout=io.StringIO())
    with pytest.raises(ValueError, match="mutually exclusive"):
        ft.debug.breakpoint(token=fnp.ones(1), ordered=True)
    with pytest.raises(ValueError, match="unknown debugger backend 'web'"):
        ft.debug.breakpoint(backend="web")
