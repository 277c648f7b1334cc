"""Integrations of the replay backend with training libraries.

``replaycompile.integrations.trl.compile_trainer(trainer, **options)``: TRL's ``GRPOTrainer`` and ``RLOOTrainer``.
The modules here import their library only when called, so importing them costs nothing.
"""
