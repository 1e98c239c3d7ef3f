module github.com/sovereign-gateway/sovereign-go

go 1.19
