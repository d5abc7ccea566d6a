"""adaptalloc plugin: everything that touches the world (Slurm, Redis, the CLI)."""
