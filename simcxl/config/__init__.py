"""The description of a system: the parameter schema (its groups and the System they make up), presets,
units, where a workload's pages lie, and the generator of every other copy of the schema (``schema_gen``).
The lowest layer: it imports nothing of the package but the compiled core (docs/reference/layout.md)."""
