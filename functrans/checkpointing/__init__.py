"""Checkpointing (rematerialization) with JAX's policies, behind the ``functrans.ad_checkpoint``
face: ``policies`` (``checkpoint_policies``, ``checkpoint_name``), ``segments`` (a policy's
saved values as checkpointed segments of their own), ``api`` (``checkpoint``/``remat`` with
policies and static arguments) and ``residuals`` (``print_saved_residuals``).

It builds on the ``checkpoint`` primitive (``transforms.autodiff.remat``), ``jit``'s call
primitive and the primitives the policies name (``dot_general``, convolutions), so it sits at
the user-API level, above primitives and transforms.
"""
