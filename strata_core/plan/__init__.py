"""From the request to the Plan: detection and claims, the cards chosen, the context, switches
and their resolution, kernel choices, packages and tuning decisions."""
