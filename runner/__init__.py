"""Rollouts in robosuite/MuJoCo: scenes, scripted experts, reuse mechanisms, the executor."""
