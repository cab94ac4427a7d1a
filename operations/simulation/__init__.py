"""The scenario simulator (FORMAT.md): scenario files, the day-by-day runner and its sandboxes."""
