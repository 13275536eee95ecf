"""The demos behind ``python -m functrans.demo`` (:mod:`functrans.demo`, the entry point):

* :mod:`~functrans.demos.mlp`: the 64-128-10 digit classifier, its loss, SGD with momentum
  and the training steps (one device, data parallel, DP-SGD) both demos run;
* :mod:`~functrans.demos.single_device`: ``python -m functrans.demo``: jit, vmap per-example
  gradients and DP-SGD, pmap, a plot of the curves;
* :mod:`~functrans.demos.distributed`: ``python -m functrans.demo --distributed``: the MLP
  trained data-parallel, FSDP, tensor-parallel and as a pipeline, checked against one device
  (also under ``mpiexec``).

Nothing in the library imports them.
"""
