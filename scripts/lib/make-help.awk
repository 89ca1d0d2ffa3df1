# make-help.awk MAKEFILE - 'make help': the targets and variables of the
# Makefile from its "## NAME: description" lines, one per line, aligned.
# A NAME starting with an upper-case letter is a variable (VAR=VALUE).

/^## [^ :]+: / {
	line = substr($0, 4)
	i = index(line, ": ")
	name = substr(line, 1, i - 1)
	text = substr(line, i + 2)
	if (name ~ /^[A-Z]/) {
		nv++
		vname[nv] = name
		vtext[nv] = text
	} else {
		nt++
		tname[nt] = "make " name
		ttext[nt] = text
	}
	if (length(name) + 5 > width)
		width = length(name) + 5
}

END {
	fmt = "  %-" width "s  %s\n"
	print "Targets:"
	for (i = 1; i <= nt; i++)
		printf fmt, tname[i], ttext[i]
	print "Variables (make TARGET VAR=VALUE):"
	for (i = 1; i <= nv; i++)
		printf fmt, vname[i], vtext[i]
	print "More in README.md."
}
