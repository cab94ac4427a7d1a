"""The plan simulator: replays a scenario (shared/scenarios/FORMAT.md) through the real services and jobs."""
