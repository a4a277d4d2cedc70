"""Tools for developing and testing segmentlog: local clusters and servers, not the data source."""
