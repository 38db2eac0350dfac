"""Use cases: one module a family, each a class given only the ports it uses
(`licore.services.wiring.UseCases` builds them); each call runs in one unit of work."""
