"""What every cluster process shares: identity and state session, local files, HTTP plumbing, the daemon loop."""
