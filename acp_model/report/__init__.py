"""Reports: the JSON document every command writes, its terminal rendering, JUnit XML."""
