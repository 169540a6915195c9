ARGS --wrap hostname
