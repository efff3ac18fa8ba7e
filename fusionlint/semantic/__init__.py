"""The semantic model of one function's code: what a name is bound to and what a value may hold.

- ``values``: abstract values of CPython ``ast`` expressions (a tensor, a Python number, an instance of
  a class...), used by the project index (``fusionlint.project``) for its interprocedural facts;
- ``tensors``: ``TensorFacts``, what the libcst rules ask through ``ctx.is_tensor``, seeded with the
  project model's facts (tensor parameters, helpers that return tensors);
- ``guards``: what ``isinstance`` / ``is None`` tests say about a name inside the code they guard;
- ``bindings``: the names a function binds and where;
- ``is_compiling``: code Dynamo never traces (the eager-only side of an ``is_compiling()`` test).

How fusionlint knows that a value is a tensor is decided here and nowhere else; the cross-file half
(files, imports, classes, the call graph) is ``fusionlint.project``.
"""
