"""vtalab.sim"""
