#!/bin/bash
# train

#PHX -t soon
run
