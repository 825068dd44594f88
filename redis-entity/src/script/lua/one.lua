-- One entity per call.
return run(KEYS, 1, #ARGV)
