package httpapi
