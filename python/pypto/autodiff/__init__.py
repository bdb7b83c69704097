"""Automatic differentiation: ``p.grad``, ``p.value_and_grad`` and ``loss.backward()``
(gradients), and the optimisers of ``p.optim`` (optim)."""
