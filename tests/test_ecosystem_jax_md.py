"""jax-md (the pinned release of tests/ecosystem.py) runs unchanged on functrans: a periodic
Lennard-Jones system's energies and forces (all pairs and with a neighbor list), FIRE
minimisation, and NVE and Nose-Hoover NVT dynamics. Expected values come from the same programs
on JAX 0.10.2 (CPU, float32); every program runs in a child process under
``python -m functrans.as_jax``."""
from __future__ import annotations

import json

import pytest

from ecosystem import all_close, run_as_jax

pytestmark = pytest.mark.timeout(900)


def test_lennard_jones_energies_forces_neighbor_list_and_fire():
    # On JAX 0.10.2: E0 -101.13842, forces of particles 0-2 [[-0.18965206, 1.0813943],
    # [0.57981682, -0.39271819], [-0.11876968, -0.20179391]], the neighbor-list energy
    # -101.13843 (the same pairs), 776 neighbor slots, no overflow; after 200 FIRE steps
    # E -157.08578 and the largest force component 0.25049776. The positions are the same bits
    # (threefry), so energies and forces agree to float32 rounding of differently ordered
    # pair sums (measured: 8e-8 relative for E0, 2e-6 absolute for the forces): held to 1e-6
    # and 1e-5. Forces sum to zero up to that rounding (JAX: 4.8e-7). FIRE's 200 steps compound
    # those rounding differences through its adaptive step; the energy stays within 1e-6
    # relative (functrans: -157.08580) and the largest force, a difference of large terms near
    # the minimum, within 1e-3 relative (functrans: 0.25061166, 5e-4).
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp
        from jax import random
        from jax_md import space, energy, quantity, minimize

        # 64 Lennard-Jones particles in a periodic 2-D box at density 0.6, on a jittered lattice
        N, dim, density = 64, 2, 0.6
        box = float((N / density) ** (1 / dim))
        grid = jnp.stack(jnp.meshgrid(jnp.arange(8), jnp.arange(8)), -1).reshape(-1, 2)
        R = (grid + 0.5 + 0.05 * random.normal(random.PRNGKey(0), (N, dim))) * (box / 8)

        displacement, shift = space.periodic(box)
        energy_fn = energy.lennard_jones_pair(displacement)
        force_fn = quantity.force(energy_fn)
        F = force_fn(R)
        out = {"E0": float(energy_fn(R)), "F0": F[:3].tolist(),
               "Fsum": float(jnp.abs(jnp.sum(F, 0)).max())}

        neighbor_fn, energy_nl = energy.lennard_jones_neighbor_list(displacement, box)
        nbrs = neighbor_fn.allocate(R)
        out["E0_nl"] = float(energy_nl(R, neighbor=nbrs))
        out["F0_nl"] = quantity.force(energy_nl)(R, neighbor=nbrs)[:3].tolist()
        out["nbr_shape"] = list(nbrs.idx.shape)
        out["overflow"] = bool(nbrs.did_buffer_overflow)

        init_fn, apply_fn = minimize.fire_descent(energy_fn, shift, dt_start=0.01, dt_max=0.05)
        apply_fn = jax.jit(apply_fn)
        state = init_fn(R)
        for i in range(200):
            state = apply_fn(state)
        out["E_fire"] = float(energy_fn(state.position))
        out["Fmax_fire"] = float(jnp.abs(force_fn(state.position)).max())
        print(json.dumps(out))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    want_f = [[-0.18965206, 1.0813943], [0.57981682, -0.39271819], [-0.11876968, -0.20179391]]
    assert all_close([res["E0"], res["E0_nl"]], [-101.13842, -101.13843], 1e-6)
    for key in ("F0", "F0_nl"):
        assert all_close(sum(res[key], []), sum(want_f, []), 0, 1e-5), key
    assert res["Fsum"] < 1e-5
    assert res["nbr_shape"] == [2, 776] and not res["overflow"]
    assert all_close([res["E_fire"]], [-157.08578], 1e-6)
    assert all_close([res["Fmax_fire"]], [0.25049776], 1e-3)


def test_nve_with_a_neighbor_list_and_nose_hoover_nvt_dynamics():
    # On JAX 0.10.2: NVE total energy -71.089249 -> -71.089531 over 100 steps of dt=1e-3
    # (velocity Verlet drift 4e-6 relative), positions of particles 0-1 after them
    # [[0.74674952, 0.73868585], [2.0170498, 0.65460986]]; NVT: the Nose-Hoover invariant
    # -70.041595 -> -70.041718, temperature 0.46251041, positions [[0.59934950, 0.82809180],
    # [1.9148222, 0.59012353]]. The initial momenta are the same bits (threefry) and 100 steps
    # of smooth dynamics keep float32 rounding differences small (measured: positions equal to
    # the printed digits, energies within 1.1e-7 relative): energies held to 1e-6 relative,
    # positions to 1e-5 absolute, the temperature to 1e-5 relative.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp
        from jax import random, lax
        from jax_md import space, energy, quantity, simulate

        N, dim, density = 64, 2, 0.6
        box = float((N / density) ** (1 / dim))
        grid = jnp.stack(jnp.meshgrid(jnp.arange(8), jnp.arange(8)), -1).reshape(-1, 2)
        R = (grid + 0.5 + 0.05 * random.normal(random.PRNGKey(0), (N, dim))) * (box / 8)
        displacement, shift = space.periodic(box)
        k_nve, k_nvt = random.split(random.PRNGKey(1))
        out = {}

        # NVE (velocity Verlet) with a neighbor list updated every step, 100 steps in a fori_loop
        neighbor_fn, energy_nl = energy.lennard_jones_neighbor_list(displacement, box)
        init_fn, step_fn = simulate.nve(energy_nl, shift, dt=1e-3)
        nbrs = neighbor_fn.allocate(R)
        st = init_fn(k_nve, R, kT=0.5, neighbor=nbrs)

        def total_energy(st, nbrs):
            return float(energy_nl(st.position, neighbor=nbrs)
                         + quantity.kinetic_energy(momentum=st.momentum, mass=st.mass))

        def body(i, carry):
            st, nbrs = carry
            st = step_fn(st, neighbor=nbrs)
            return st, nbrs.update(st.position)

        out["nve_E_start"] = total_energy(st, nbrs)
        st, nbrs = jax.jit(lambda st, nbrs: lax.fori_loop(0, 100, body, (st, nbrs)))(st, nbrs)
        out["nve_E_end"] = total_energy(st, nbrs)
        out["nve_pos"] = st.position[:2].tolist()
        out["nve_overflow"] = bool(nbrs.did_buffer_overflow)

        # NVT with a Nose-Hoover chain, 100 jitted steps on the pair energy
        energy_fn = energy.lennard_jones_pair(displacement)
        init_fn, step_fn = simulate.nvt_nose_hoover(energy_fn, shift, dt=1e-3, kT=0.5)
        st = init_fn(k_nvt, R)
        step_fn = jax.jit(step_fn)
        out["nvt_inv_start"] = float(simulate.nvt_nose_hoover_invariant(energy_fn, st, 0.5))
        for i in range(100):
            st = step_fn(st)
        out["nvt_T"] = float(quantity.temperature(momentum=st.momentum, mass=st.mass))
        out["nvt_inv"] = float(simulate.nvt_nose_hoover_invariant(energy_fn, st, 0.5))
        out["nvt_pos"] = st.position[:2].tolist()
        print(json.dumps(out))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    assert all_close([res["nve_E_start"], res["nve_E_end"]], [-71.089249, -71.089531], 1e-6)
    want = [0.74674952, 0.73868585, 2.0170498, 0.65460986]
    assert all_close(sum(res["nve_pos"], []), want, 0, 1e-5)
    assert not res["nve_overflow"]
    assert all_close([res["nvt_inv_start"], res["nvt_inv"]], [-70.041595, -70.041718], 1e-6)
    assert all_close([res["nvt_T"]], [0.46251041], 1e-5)
    want = [0.59934950, 0.82809180, 1.9148222, 0.59012353]
    assert all_close(sum(res["nvt_pos"], []), want, 0, 1e-5)
