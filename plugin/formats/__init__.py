"""Files users hand us: observation CSV, Standard Workload Format traces."""
