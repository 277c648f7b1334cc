"""Planning a run before launch: ``memory`` (the per-token memory model of each step variant, fitted to the
measured peaks) and ``planner`` (``replaycompile plan``: per-rank peak, FLOPs and the longest prompt that fits,
under a parallel layout). Reads configs and numbers only: nothing here runs a model."""
