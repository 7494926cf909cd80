"""What runs work: the study and training runners, their scheduler and processes, leases, checkpoints."""
