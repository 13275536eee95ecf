"""jraph (the pinned release of tests/ecosystem.py) runs unchanged on functrans: graph networks
built with haiku on batched, padded ``GraphsTuple``s train with optax under ``jax.jit``, and
its attention (``segment_softmax``, ``GAT``) and helpers go through ``jax.ops.segment_*``,
``vmap`` and ``grad``. Expected values come from the same programs on JAX 0.10.2 (CPU,
float32); every program runs in a child process under ``python -m functrans.as_jax``."""
from __future__ import annotations

import json

import pytest

from ecosystem import all_close, run_as_jax

pytestmark = pytest.mark.timeout(900)


def test_graph_network_and_gcn_on_padded_batches_train_with_adam():
    # Three random graphs (5, 3, 7 nodes) joined by jraph.batch and padded to 20 nodes, 30
    # edges, 4 graphs; a GraphNetwork of haiku MLPs regresses a per-graph target through its
    # globals (the padding graph masked out of the loss), a GraphConvolution with self-edges
    # maps the nodes; adam(1e-2), 40 jitted steps. On JAX 0.10.2: globals [-2.3932126,
    # -0.36893326, -1.1843257, 0.0], GCN output's sum of squares 7.6788888, loss 4.9163632 at
    # step 0, 0.044753045 at step 10, 0.0039981101 at step 39. Same initial weights and
    # inputs: untrained values agree to float32 rounding (measured 1.6e-7 relative): 1e-5;
    # adam compounds reduction-order rounding over the steps (measured: 3.2e-6 at step 10,
    # 2.1e-5 at step 39, a loss 1000x smaller than at the start): 2e-4.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp, numpy as np
        import jraph, optax
        import haiku as hk

        def make_graph(n, e, seed):
            rng = np.random.RandomState(seed)
            return jraph.GraphsTuple(
                nodes=jnp.asarray(rng.randn(n, 4).astype(np.float32)),
                edges=jnp.asarray(rng.randn(e, 2).astype(np.float32)),
                senders=jnp.asarray(rng.randint(0, n, e)),
                receivers=jnp.asarray(rng.randint(0, n, e)),
                n_node=jnp.asarray([n]), n_edge=jnp.asarray([e]),
                globals=jnp.asarray(rng.randn(1, 3).astype(np.float32)))

        graphs = [make_graph(5, 8, 0), make_graph(3, 4, 1), make_graph(7, 12, 2)]
        padded = jraph.pad_with_graphs(jraph.batch(graphs), n_node=20, n_edge=30, n_graph=4)
        mask = jraph.get_graph_padding_mask(padded)
        targets = jnp.asarray([1.0, -1.0, 0.5, 0.0])

        def net_fn(g):
            def mlp(n):
                return lambda *a: hk.nets.MLP([16, n], activation=jax.nn.relu)(
                    jnp.concatenate(a, -1))
            g = jraph.GraphNetwork(update_edge_fn=mlp(8), update_node_fn=mlp(8),
                                   update_global_fn=mlp(1))(g)
            g2 = jraph.GraphConvolution(update_node_fn=hk.Linear(4), add_self_edges=True)(g)
            return g.globals[:, 0], g2.nodes

        net = hk.without_apply_rng(hk.transform(net_fn))
        params = net.init(jax.random.PRNGKey(0), padded)
        res = {"n_node": padded.n_node.tolist(), "mask": mask.tolist()}
        out, nodes = net.apply(params, padded)
        res["out0"] = out.tolist()
        res["gcn_nodes"] = [float(jnp.sum(nodes[:15] ** 2))]

        def loss(p, g):
            pred, _ = net.apply(p, g)
            return jnp.sum(jnp.where(mask, (pred - targets) ** 2, 0.0)) / jnp.sum(mask)

        opt = optax.adam(1e-2)
        st = opt.init(params)

        @jax.jit
        def step(p, s, g):
            l, gr = jax.value_and_grad(loss)(p, g)
            u, s = opt.update(gr, s, p)
            return optax.apply_updates(p, u), s, l

        losses = []
        for i in range(40):
            params, st, l = step(params, st, padded)
            losses.append(float(l))
        res["losses"] = [losses[0], losses[10], losses[-1]]
        res["unbatch"] = [int(g.n_node[0]) for g in
                          jraph.unbatch(jraph.unpad_with_graphs(padded))]
        print(json.dumps(res))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    assert res["n_node"] == [5, 3, 7, 5] and res["mask"] == [True, True, True, False]
    assert res["unbatch"] == [5, 3, 7]
    assert all_close(res["out0"], [-2.3932126, -0.36893326, -1.1843257, 0.0], 1e-5)
    assert all_close(res["gcn_nodes"] + res["losses"][:1], [7.6788888, 4.9163632], 1e-5)
    assert all_close(res["losses"][1:], [0.044753045, 0.0039981101], 2e-4)


def test_segment_softmax_gat_and_segment_ops_under_jit_vmap_and_grad():
    # jraph.segment_softmax of 12 logits in 5 segments (one empty) and its gradient;
    # jax.ops.segment_max / segment_sum (of a scalar: each segment's size) / vmap of
    # segment_sum; jraph.get_fully_connected_graph without self-edges (a vmap of jnp.roll by
    # traced shifts); a GAT layer (haiku) on a batch of three graphs, jitted, and its
    # gradient. On JAX 0.10.2 the values are those below. Same inputs and weights: they agree
    # to float32 rounding (measured: at most 3e-7 relative on values; the softmax gradient's
    # entries are differences of O(1) terms, 1.6e-7 absolute): 1e-5 relative, plus 1e-6
    # absolute on gradients.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp, numpy as np
        import jraph
        import haiku as hk

        logits = jax.random.normal(jax.random.PRNGKey(3), (12,))
        seg = jnp.array([0, 0, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3])
        res = {}
        res["segsm"] = jraph.segment_softmax(logits, seg, 5).tolist()
        res["segsm_grad"] = jax.grad(lambda l: jnp.sum(jraph.segment_softmax(l, seg, 5)
                                                       * jnp.arange(12.0)))(logits).tolist()
        res["seg_max"] = jax.ops.segment_max(logits, seg, 5)[:4].tolist()
        res["seg_mean"] = jraph.segment_mean(logits, seg, 5).tolist()
        res["seg_count"] = jax.ops.segment_sum(1.0, seg, 5).tolist()
        res["vmap_seg_sum"] = jax.vmap(lambda l: jax.ops.segment_sum(l, seg, 4))(
            jnp.stack([logits, -logits])).ravel().tolist()
        fc = jraph.get_fully_connected_graph(n_node_per_graph=3, n_graph=2,
                                             add_self_edges=False)
        res["fc"] = [fc.senders.tolist(), fc.receivers.tolist()]
        rng = np.random.RandomState(0)
        graphs = [jraph.GraphsTuple(
            nodes=jnp.asarray(rng.randn(n, 4).astype(np.float32)), edges=None,
            senders=jnp.asarray(rng.randint(0, n, e)), receivers=jnp.asarray(rng.randint(0, n, e)),
            n_node=jnp.asarray([n]), n_edge=jnp.asarray([e]), globals=None)
            for n, e in [(5, 8), (3, 4), (7, 12)]]
        batch = jraph.batch(graphs)

        def gat_fn(g):
            g = g._replace(nodes=hk.Linear(6)(g.nodes))
            gat = jraph.GAT(attention_query_fn=lambda n: n,
                            attention_logit_fn=lambda s, r, e: hk.Linear(1)(
                                jnp.concatenate([s, r], -1)),
                            node_update_fn=jax.nn.elu)
            return gat(g).nodes

        gat = hk.without_apply_rng(hk.transform(gat_fn))
        gp = gat.init(jax.random.PRNGKey(1), batch)
        res["gat"] = jax.jit(gat.apply)(gp, batch)[:2].ravel().tolist()
        gg = jax.grad(lambda p: jnp.sum(jnp.tanh(gat.apply(p, batch))))(gp)
        res["gat_grad"] = [float(jnp.sum(x ** 2)) for x in jax.tree_util.tree_leaves(gg)]
        print(json.dumps(res))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    want = {
        "segsm": [0.048078924, 0.95192105, 0.15938982, 0.78019857, 0.060411491, 0.45522165,
                  0.10627608, 0.27314383, 0.16535838, 0.12493377, 0.73341531, 0.14165087],
        "seg_max": [1.539381, 1.9707018, 0.20941563, 0.63385177],
        "seg_mean": [0.046562016, 0.58851355, -0.5351342, -0.50423998, 0.0],
        "seg_count": [2.0, 3.0, 4.0, 3.0, 0.0],
        "vmap_seg_sum": [0.093124032, 1.7655406, -2.1405368, -1.5127199, -0.093124032,
                         -1.7655406, 2.1405368, 1.5127199],
        "gat": [0.024610542, -0.79492509, -0.38630852, -0.57911611, 0.20788924, -0.20145406,
                -0.1547625, -0.797005, -0.31601608, -0.35668212, -0.11644121, -0.31080624]}
    for key, values in want.items():
        assert all_close(res[key], values, 1e-5), key
    want_grads = {
        "segsm_grad": [-0.045767341, 0.045767341, -0.14361367, 0.07722275, 0.066390917,
                       -0.52288556, -0.01579671, 0.23254415, 0.30613816, -0.12702216,
                       -0.012260884, 0.13928305],
        "gat_grad": [377.06659, 39.44841, 0.0, 56.989403]}
    for key, values in want_grads.items():
        assert all_close(res[key], values, 1e-5, 1e-6), key
    assert res["fc"] == [[1, 2, 2, 0, 0, 1, 4, 5, 5, 3, 3, 4],
                         [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]]
