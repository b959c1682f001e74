"""The simulated cluster's controllers, one object per real controller,
each reading and writing the world's store (see ``sim/world.py`` for the
order they run in)."""
