// Starts Swagger UI on the element #swagger-ui. The page (explorer.Page)
// puts the OpenAPI document's URL in its data-openapi-url attribute, and,
// when it shows the API one area at a time, each area's document URL in an
// <option> of the picker #explorer-area; so this file holds no URL and the
// page needs no inline script.
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
	// The area picker: a deep link (#/Feature%20toggles/listToggles, as
	// Swagger UI writes them; older ones wrote spaces as _) opens the area
	// of its tag.
	var picker = document.getElementById("explorer-area");
	var linkPath = function (name) {
		return name.replace(/\s/g, "_");
	};
	if (picker && picker.options.length > 0) {
		var linked = "";
		try {
			linked = decodeURIComponent((window.location.hash.split("/")[1] || ""));
		} catch (e) {
			linked = "";
		}
		for (var i = 0; i < picker.options.length; i++) {
			var name = picker.options[i].getAttribute("data-area") || "";
			if (linked && (linkPath(name) === linked || name === linked)) {
				picker.selectedIndex = i;
				break;
			}
		}
		url = picker.value;
	}
	var ui = window.SwaggerUIBundle({
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
	window.ui = ui;
	if (picker) {
		picker.addEventListener("change", function () {
			var name = picker.options[picker.selectedIndex].getAttribute("data-area") || "";
			// The address names the area shown, so that a reload shows it again.
			window.history.replaceState(null, "", "#/" + encodeURIComponent(name));
			ui.specActions.updateUrl(picker.value);
			ui.specActions.download(picker.value);
		});
	}
})();
