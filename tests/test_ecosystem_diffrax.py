"""diffrax (the pinned release of tests/ecosystem.py) runs unchanged on functrans: adaptive
ODE solves (Tsit5 with a PID step-size controller, saving at given times), their step
counts, gradients through a solve (RecursiveCheckpointAdjoint), and a stiff solve (Kvaerno5).
Expected values come from the same programs on JAX 0.10.2 (CPU); every program runs in a
child process under ``python -m functrans.as_jax``."""
from __future__ import annotations

import json

import numpy as np
import pytest

from ecosystem import run_as_jax

pytestmark = pytest.mark.timeout(900)

LOTKA_VOLTERRA = """
    import json
    import jax, jax.numpy as jnp
    import diffrax

    def vector_field(t, y, args):
        a, b, c, d = args
        x, z = y
        return jnp.stack([a * x - b * x * z, -c * z + d * x * z])
    term = diffrax.ODETerm(vector_field)
    args = jnp.array([1.5, 1.0, 3.0, 1.0])
    controller = diffrax.PIDController(rtol=1e-6, atol=1e-8)
    sol = diffrax.diffeqsolve(term, diffrax.Tsit5(), t0=0.0, t1=10.0, dt0=0.1,
                              y0=jnp.array([10.0, 1.0]), args=args,
                              saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 10.0, 11)),
                              stepsize_controller=controller, max_steps=4096)
    res = {"x64": bool(jax.config.jax_enable_x64), "ys": sol.ys.tolist(),
           "steps": int(sol.stats["num_steps"]),
           "rejected": int(sol.stats["num_rejected_steps"])}

    def loss(args):
        s = diffrax.diffeqsolve(term, diffrax.Tsit5(), t0=0.0, t1=2.0, dt0=0.1,
                                y0=jnp.array([10.0, 1.0]), args=args,
                                stepsize_controller=controller,
                                adjoint=diffrax.RecursiveCheckpointAdjoint())
        return jnp.sum(s.ys[-1] ** 2)
    res["grad"] = jax.grad(loss)(args).tolist()
    print(json.dumps(res))
"""

ROBERTSON = """
    import json
    import jax, jax.numpy as jnp
    import diffrax

    def robertson(t, y, args):
        y1, y2, y3 = y
        return jnp.stack([-0.04 * y1 + 1e4 * y2 * y3,
                          0.04 * y1 - 1e4 * y2 * y3 - 3e7 * y2 ** 2,
                          3e7 * y2 ** 2])
    sol = diffrax.diffeqsolve(diffrax.ODETerm(robertson), diffrax.Kvaerno5(), t0=0.0,
                              t1=100.0, dt0=1e-4, y0=jnp.array([1.0, 0.0, 0.0]),
                              stepsize_controller=diffrax.PIDController(rtol=1e-4, atol=1e-7))
    print(json.dumps({"y": sol.ys[-1].tolist(), "steps": int(sol.stats["num_steps"]),
                      "rejected": int(sol.stats["num_rejected_steps"])}))
"""


# JAX 0.10.2's saved states (t = 0, 1, ..., 10) and d(loss)/d(args)
YS_32 = [[10.0, 1.0], [0.42361671, 2.41344500], [0.79889125, 0.19913819], [3.25908446, 0.05608134],
         [9.81760597, 2.50403571], [0.39443702, 1.72331345], [0.94900709, 0.15105315],
         [3.93016458, 0.06050107], [7.26018715, 5.27326155], [0.39638850, 1.22853589],
         [1.13328958, 0.11708619]]
GRAD_32 = [0.730466783, 0.348150641, 1.939015269, -4.289079666]
YS_64 = [[10.0, 1.0], [0.42361700987368683, 2.4134455711239635],
         [0.7988916161635413, 0.19913831518146852], [3.2590865450225666, 0.056081423894847895],
         [9.817598789474685, 2.5040424734952587], [0.3944376421693254, 1.7233118001523544],
         [0.9490091039361926, 0.15105312001181673], [3.930172328479435, 0.060501290443722586],
         [7.260134873114396, 5.273300440151926], [0.3963898050084009, 1.2285315635095007],
         [1.1332942578613683, 0.1170860922364749]]
GRAD_64 = [0.730467921003775, 0.3481509819952845, 1.9390161498409202, -4.289080992264093]


def _run(program, **env):
    return json.loads(run_as_jax(program, env=env).strip().splitlines()[-1])


@pytest.mark.parametrize("x64", [False, True])
def test_tsit5_with_pid_controller_saves_at_ts_and_differentiates(x64):
    # Lotka-Volterra over [0, 10], rtol 1e-6. On JAX 0.10.2, float64: 144 steps, 25 rejected,
    # and functrans takes exactly those steps (its states agree to 1e-12). In float32 JAX
    # takes 144 steps (25 rejected) and functrans 143 (24): the error estimate is a
    # difference of 4th- and 5th-order solutions, so float32 rounding (~1e-7 of |y| ~ 10) is
    # amplified ~1e4-fold in it at this tolerance, and the first accepted step already
    # chooses a next step size 2e-5 apart (JAX fuses with FMA, functrans does not); the
    # trajectories then take different steps (the count within 2 of JAX's). Each float32
    # solution is within 1e-5 of the float64 one (JAX's: 7e-6 relative at t = 8; functrans's
    # 3e-6 from JAX's there), so the saved states are held to 3e-5 relative. The gradient
    # through the solve (RecursiveCheckpointAdjoint, backpropagating through the steps
    # taken) agrees to 1e-5 in float32 (functrans: 0.73046780 for JAX's 0.73046678), 1e-9 in
    # float64.
    res = _run(LOTKA_VOLTERRA, JAX_ENABLE_X64="1" if x64 else "0")
    assert res["x64"] == x64
    ys = np.array(res["ys"])
    if x64:
        assert (res["steps"], res["rejected"]) == (144, 25)
        np.testing.assert_allclose(ys, YS_64, rtol=1e-10)
        np.testing.assert_allclose(res["grad"], GRAD_64, rtol=1e-9)
    else:
        assert abs(res["steps"] - 144) <= 2 and abs(res["rejected"] - 25) <= 2
        np.testing.assert_allclose(ys, YS_32, rtol=3e-5)
        np.testing.assert_allclose(res["grad"], GRAD_32, rtol=1e-5)


def test_kvaerno5_solves_the_stiff_robertson_problem():
    # Robertson's reactions (rates 0.04, 1e4, 3e7) over [0, 100] with the implicit Kvaerno5
    # (Newton iterations with lineax's LU inside). On JAX 0.10.2, float32: 139 steps (70
    # rejected), to y = [0.61723512, 6.1535870e-06, 0.38275892]. functrans's native code
    # (no FMA contraction, unlike XLA's) rounds the step's float32 arithmetic differently,
    # and step acceptance is decided by error estimates compared with rtol 1e-4 right at
    # their threshold: it takes 141 steps (71 rejected), to the same state within 1e-6
    # relative. In float64 the rounding is too small to change a decision: JAX's 139 steps
    # (70 rejected) exactly, to y = [0.61723494469830, 6.1535891519104e-06,
    # 0.38275890171255], which functrans matches to 1e-12.
    res = _run(ROBERTSON)
    assert abs(res["steps"] - 139) <= 2 and abs(res["rejected"] - 70) <= 2
    np.testing.assert_allclose(res["y"], [0.617235124, 6.153587037e-06, 0.382758915], rtol=1e-6)
    res = _run(ROBERTSON, JAX_ENABLE_X64="1")
    assert (res["steps"], res["rejected"]) == (139, 70)
    np.testing.assert_allclose(
        res["y"], [0.6172349446983023, 6.153589151910426e-06, 0.3827589017125457], rtol=1e-12)
