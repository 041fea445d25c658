"""What a plugin author sees: the hook specs, the records hooks take and return, switches,
the arch plugin base and the plugin manager."""
