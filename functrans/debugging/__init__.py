"""Looking inside running programs, behind the ``functrans.debug`` face: ``callbacks``
(``debug.callback``, ``debug.print``), ``debugger`` (``debug.breakpoint``: a prompt on the
caller's frames) and ``visualize`` (``visualize_array_sharding``).

It binds the ``debug_callback`` primitive (``primitives.callback``) and reads core's frames and
meshes, so it sits at the user-API level, above primitives.
"""
