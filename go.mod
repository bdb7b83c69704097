module pypto

go 1.26
