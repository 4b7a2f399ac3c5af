// Starts Swagger UI on the element #swagger-ui. The page (explorer.Page)
// puts the OpenAPI document's URL in its data-openapi-url attribute, so this
// file holds no URL and the page needs no inline script.
(function () {
	"use strict";
	var root = document.getElementById("swagger-ui");
	var url = root && root.getAttribute("data-openapi-url");
	if (!root || !url || typeof window.SwaggerUIBundle !== "function") {
		if (root) {
			root.textContent = "The API explorer could not start: its script did not load.";
		}
		return;
	}
	window.ui = window.SwaggerUIBundle({
		url: url,
		domNode: root,
		presets: [window.SwaggerUIBundle.presets.apis],
		// BaseLayout: no top bar, so no box to load another document.
		layout: "BaseLayout",
		// No badge from validator.swagger.io: nothing leaves the server.
		validatorUrl: null,
		// Ignore ?url= and ?configUrl= in the page's address: the explorer
		// shows this server's document only.
		queryConfigEnabled: false,
		deepLinking: true,
		docExpansion: "list",
		defaultModelsExpandDepth: 0,
		displayRequestDuration: true,
		filter: true,
		tryItOutEnabled: false,
		persistAuthorization: false
	});
})();
