module voicebox

go 1.26
