"""Calls to a ttc server: what ``--server`` sends (studies, runs, trainings) and how it follows them."""
