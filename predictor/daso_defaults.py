"""DASO's knobs as Heat ships them (``heat/optim/dp_optimizer.py``; Coquelin et al. 2022), written
once: the strategy runs them when a config's options leave them out, the HE model reads the global
skip they lead to, and the re-plans of ``ttc train`` move the skips from them."""

MAX_GLOBAL_SKIPS = 8  # local steps between global syncs at most; skipping starts at half of it
WARMUP_EPOCHS = 4  # epochs of blocking global syncs before skipping starts
COOLDOWN_EPOCHS = 4  # epochs of blocking global syncs at the end of a run of known length
STABILITY_LEVEL = 0.05  # relative improvement of the epoch loss below which it is a plateau
